// Preloaded into an app process (NODE_OPTIONS=--require) to give it a wall clock that is off by
// PUNCTUAL_TEST_CLOCK_SKEW_MS: Date.now() and `new Date()` move, timers (monotonic) do not — as on a
// host whose NTP is broken.
const skew = Number(process.env.PUNCTUAL_TEST_CLOCK_SKEW_MS || 0);
if (skew) {
  const RealDate = Date;
  class SkewedDate extends RealDate {
    constructor(...args) {
      if (args.length === 0) super(RealDate.now() + skew);
      else super(...args);
    }
    static now() {
      return RealDate.now() + skew;
    }
  }
  globalThis.Date = SkewedDate;
}
