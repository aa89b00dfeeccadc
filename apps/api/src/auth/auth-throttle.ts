/**
 * Counts failed authentications per client address in a sliding window; past the limit the client
 * is refused (429) until the window passes, so keys cannot be guessed at speed.
 */
export class AuthThrottle {
  private readonly failures = new Map<string, number[]>();

  constructor(
    private readonly limit = 20,
    private readonly windowMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {}

  blocked(client: string): boolean {
    return this.recent(client).length >= this.limit;
  }

  fail(client: string): void {
    const recent = this.recent(client);
    recent.push(this.now());
    this.failures.set(client, recent);
    if (this.failures.size > 10_000) this.failures.clear();
  }

  private recent(client: string): number[] {
    const since = this.now() - this.windowMs;
    return (this.failures.get(client) ?? []).filter((t) => t > since);
  }
}
