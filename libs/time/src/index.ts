export * from './duration.js';
export * from './errors.js';
export * from './jitter.js';
export * from './schedule.js';
export * from './zone.js';
