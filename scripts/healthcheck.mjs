#!/usr/bin/env node
// The container HEALTHCHECK: the API answers on PORT, the scheduler and the worker on
// HEALTH_PORT; whichever this container runs, one of them must say it is alive.
const ports = [process.env.HEALTH_PORT || '8081', process.env.PORT || '3000'];
const alive = async (port) => {
  try {
    return (await fetch(`http://127.0.0.1:${port}/health/live`, { signal: AbortSignal.timeout(3000) })).ok;
  } catch {
    return false;
  }
};
const results = await Promise.all(ports.map(alive));
process.exit(results.some(Boolean) ? 0 : 1);
