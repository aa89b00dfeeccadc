import type { Browser, LaunchOptions } from 'playwright-core';

export function chromiumLaunchOptions(): Promise<
  LaunchOptions & { executablePath: string; source: 'system' | '@sparticuz/chromium' }
>;
export function launchChromium(): Promise<Browser>;
