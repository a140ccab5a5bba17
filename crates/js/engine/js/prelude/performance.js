// Bosun JS engine prelude: `performance`, a small honest subset: `now()` counts from when the
// prelude ran (`timeOrigin`), which `process.hrtime` shares.
"use strict";

(function bosunPreludePerformance(shared) {
  const { ObjectFreeze, DateNow } = shared;

  const timeOrigin = DateNow();
  const performance = ObjectFreeze({
    timeOrigin,
    now: () => DateNow() - timeOrigin,
    toJSON: () => ({ timeOrigin }),
  });

  shared.provide({ timeOrigin, performance });
})(globalThis.__bosunPrelude);
