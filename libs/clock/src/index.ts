export { ClockModule } from './clock.module.js';
export { CLOCK_ROLE, ClockService } from './clock.service.js';
export { type ClockSample, offsetFromSamples, sampleClock } from './clock-offset.js';
