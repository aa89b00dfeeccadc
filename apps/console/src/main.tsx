import type { Me } from '@punctual/contract';
import { render } from 'preact';
import { api, errorText } from './api.js';
import { App } from './app.js';
import './styles.css';

const root = document.getElementById('app')!;

/** Who is signed in decides which controls the console shows; nothing renders before that is known. */
async function start(): Promise<void> {
  let me: Me;
  try {
    me = await api.me();
  } catch (error) {
    root.textContent = `The console cannot reach the API: ${errorText(error)}`;
    return;
  }
  render(<App me={me} />, root);
}

void start(); // never rejects: it shows what failed on the page
