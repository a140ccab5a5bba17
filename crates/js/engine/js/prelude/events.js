// Bosun JS engine prelude: `Event` and `EventTarget`. No bubbling or capture phases: there is
// no tree, only targets.
"use strict";

(function bosunPreludeEvents(shared) {
  const { ObjectDefineProperty, ReflectApply, DateNow, reportError } = shared;

  let eventBeginDispatch;
  let eventEndDispatch;
  let eventStopped;

  class Event {
    #type;
    #bubbles;
    #cancelable;
    #composed;
    #defaultPrevented = false;
    #target = null;
    #currentTarget = null;
    #stopImmediate = false;
    #timeStamp = DateNow();

    constructor(type, init = undefined) {
      if (arguments.length === 0) throw new TypeError("Event: the type argument is required");
      this.#type = String(type);
      this.#bubbles = !!init?.bubbles;
      this.#cancelable = !!init?.cancelable;
      this.#composed = !!init?.composed;
    }

    get type() { return this.#type; }
    get target() { return this.#target; }
    get currentTarget() { return this.#currentTarget; }
    get srcElement() { return this.#target; }
    get bubbles() { return this.#bubbles; }
    get cancelable() { return this.#cancelable; }
    get composed() { return this.#composed; }
    get defaultPrevented() { return this.#defaultPrevented; }
    get returnValue() { return !this.#defaultPrevented; }
    get eventPhase() { return this.#currentTarget ? 2 : 0; }
    get isTrusted() { return false; }
    get timeStamp() { return this.#timeStamp; }
    get cancelBubble() { return this.#stopImmediate; }
    set cancelBubble(value) { if (value) this.#stopImmediate = true; }
    composedPath() { return this.#currentTarget ? [this.#currentTarget] : []; }
    preventDefault() { if (this.#cancelable) this.#defaultPrevented = true; }
    stopPropagation() {}
    stopImmediatePropagation() { this.#stopImmediate = true; }

    static {
      eventBeginDispatch = (event, target) => {
        if (!(#type in event)) throw new TypeError("dispatchEvent: the argument is not an Event");
        event.#target = target;
        event.#currentTarget = target;
        event.#stopImmediate = false;
      };
      eventEndDispatch = (event) => {
        event.#currentTarget = null;
      };
      eventStopped = (event) => event.#stopImmediate;
    }
  }
  for (const [name, value] of [["NONE", 0], ["CAPTURING_PHASE", 1], ["AT_TARGET", 2], ["BUBBLING_PHASE", 3]]) {
    ObjectDefineProperty(Event, name, { value, enumerable: true });
  }

  class EventTarget {
    /** type → listener records `{callback, capture, once, removed}` in registration order. */
    #listeners = new Map();

    addEventListener(type, callback, options = undefined) {
      if (callback === null || callback === undefined) return;
      if (typeof callback !== "function" && (typeof callback !== "object")) {
        throw new TypeError("addEventListener: the listener must be a function or an object");
      }
      const capture = typeof options === "boolean" ? options : !!options?.capture;
      const once = typeof options === "object" && options !== null && !!options.once;
      const signal = typeof options === "object" && options !== null ? options.signal : undefined;
      if (signal !== undefined && signal !== null && signal.aborted) return;
      const key = String(type);
      let list = this.#listeners.get(key);
      if (!list) {
        list = [];
        this.#listeners.set(key, list);
      }
      if (list.some((l) => l.callback === callback && l.capture === capture)) return;
      list.push({ callback, capture, once, removed: false });
      if (signal !== undefined && signal !== null) {
        signal.addEventListener("abort", () => this.removeEventListener(key, callback, { capture }), { once: true });
      }
    }

    removeEventListener(type, callback, options = undefined) {
      const capture = typeof options === "boolean" ? options : !!options?.capture;
      const list = this.#listeners.get(String(type));
      if (!list) return;
      const index = list.findIndex((l) => l.callback === callback && l.capture === capture);
      if (index >= 0) {
        list[index].removed = true;
        list.splice(index, 1);
      }
    }

    dispatchEvent(event) {
      eventBeginDispatch(event, this);
      try {
        const list = this.#listeners.get(event.type);
        if (list) {
          for (const listener of [...list]) {
            if (listener.removed) continue;
            if (listener.once) this.removeEventListener(event.type, listener.callback, { capture: listener.capture });
            try {
              if (typeof listener.callback === "function") ReflectApply(listener.callback, this, [event]);
              else if (typeof listener.callback.handleEvent === "function") listener.callback.handleEvent(event);
            } catch (error) {
              reportError(error);
            }
            if (eventStopped(event)) break;
          }
        }
      } finally {
        eventEndDispatch(event);
      }
      return !event.defaultPrevented;
    }
  }

  shared.provide({ Event, EventTarget });
})(globalThis.__bosunPrelude);
