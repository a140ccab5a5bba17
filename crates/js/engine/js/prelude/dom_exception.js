// Bosun JS engine prelude: `DOMException` with its legacy codes and constants, and the
// AbortError the abort machinery throws.
"use strict";

(function bosunPreludeDomException(shared) {
  const { ObjectDefineProperty, ObjectKeys, ObjectHasOwn } = shared;

  const DOM_ERROR_CODES = {
    IndexSizeError: 1, HierarchyRequestError: 3, WrongDocumentError: 4,
    InvalidCharacterError: 5, NoModificationAllowedError: 7, NotFoundError: 8,
    NotSupportedError: 9, InvalidStateError: 11, SyntaxError: 12,
    InvalidModificationError: 13, NamespaceError: 14, InvalidAccessError: 15,
    TypeMismatchError: 17, SecurityError: 18, NetworkError: 19, AbortError: 20,
    URLMismatchError: 21, QuotaExceededError: 22, TimeoutError: 23,
    InvalidNodeTypeError: 24, DataCloneError: 25,
  };

  class DOMException extends Error {
    /**
     * `new DOMException(message, name)` or `new DOMException(message, {name, cause})`.
     * `name` and `code` are own properties (simpler than WebIDL's prototype getters, same reads).
     */
    constructor(message = "", options = "Error") {
      let name = "Error";
      let hasCause = false;
      let cause;
      if (options !== null && typeof options === "object") {
        if (options.name !== undefined) name = String(options.name);
        if ("cause" in options) {
          hasCause = true;
          cause = options.cause;
        }
      } else if (options !== undefined) {
        name = String(options);
      }
      super(String(message), hasCause ? { cause } : undefined);
      ObjectDefineProperty(this, "name", { value: name, writable: true, configurable: true });
      ObjectDefineProperty(this, "code", {
        value: ObjectHasOwn(DOM_ERROR_CODES, name) ? DOM_ERROR_CODES[name] : 0,
        writable: true,
        configurable: true,
      });
    }
  }
  {
    const constants = {
      INDEX_SIZE_ERR: 1, DOMSTRING_SIZE_ERR: 2, HIERARCHY_REQUEST_ERR: 3, WRONG_DOCUMENT_ERR: 4,
      INVALID_CHARACTER_ERR: 5, NO_DATA_ALLOWED_ERR: 6, NO_MODIFICATION_ALLOWED_ERR: 7,
      NOT_FOUND_ERR: 8, NOT_SUPPORTED_ERR: 9, INUSE_ATTRIBUTE_ERR: 10, INVALID_STATE_ERR: 11,
      SYNTAX_ERR: 12, INVALID_MODIFICATION_ERR: 13, NAMESPACE_ERR: 14, INVALID_ACCESS_ERR: 15,
      VALIDATION_ERR: 16, TYPE_MISMATCH_ERR: 17, SECURITY_ERR: 18, NETWORK_ERR: 19,
      ABORT_ERR: 20, URL_MISMATCH_ERR: 21, QUOTA_EXCEEDED_ERR: 22, TIMEOUT_ERR: 23,
      INVALID_NODE_TYPE_ERR: 24, DATA_CLONE_ERR: 25,
    };
    for (const key of ObjectKeys(constants)) {
      ObjectDefineProperty(DOMException, key, { value: constants[key], enumerable: true });
      ObjectDefineProperty(DOMException.prototype, key, { value: constants[key], enumerable: true });
    }
  }

  const abortError = () => new DOMException("This operation was aborted", "AbortError");

  shared.provide({ DOMException, abortError });
})(globalThis.__bosunPrelude);
