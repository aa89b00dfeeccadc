#!/usr/bin/env node
import { runCli } from './cli.js';

/** `npx punctual …`: the exit code is set, not forced, so that stdout is flushed first. */
process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
});
