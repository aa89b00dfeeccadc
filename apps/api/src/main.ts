import 'reflect-metadata';
import { loadConfigOrExit } from '@punctual/config';
import { startApp } from '@punctual/bootstrap';
import { withDevelopmentKey } from './admin-key.js';
import { createApiApp } from './api.app.js';

const config = withDevelopmentKey(loadConfigOrExit());
await startApp(await createApiApp(config), config.port, config.host);
