import { PunctualClient } from '@punctual/client';

// Declares this app's task through Punctual's API, as a deploy step would: every second, greet
// GREET_TO by posting to GREET_WEBHOOK. Run with PUNCTUAL_URL and PUNCTUAL_API_KEY set.
const client = new PunctualClient({
  baseUrl: process.env.PUNCTUAL_URL ?? 'http://127.0.0.1:3000',
  apiKey: process.env.PUNCTUAL_API_KEY,
});
// A PUT creates the task or replaces it: running the step again changes nothing.
const task = await client.tasks.put(process.env.TASK_NAME ?? 'greet', {
  handler: 'send-greeting',
  payload: {
    to: process.env.GREET_TO ?? 'Ada',
    webhook: process.env.GREET_WEBHOOK ?? 'http://127.0.0.1:8080/greetings',
  },
  schedule: { cron: '* * * * * *' },
});
console.log(`task ${task.name} declared, version ${task.version}`);
