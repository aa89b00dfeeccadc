import type { Page } from '@punctual/contract';

/**
 * A keyset-paginated list: `for await (const item of list)` walks every page (following
 * `nextCursor`); `page()` fetches one page, `pages()` walks page by page, `all()` collects.
 */
export class Paginated<T> implements AsyncIterable<T> {
  constructor(private readonly fetchPage: (cursor: string | undefined) => Promise<Page<T>>) {}

  /** One page; pass the `nextCursor` of the previous one for the next. */
  page(cursor?: string): Promise<Page<T>> {
    return this.fetchPage(cursor);
  }

  async *pages(): AsyncGenerator<Page<T>> {
    let cursor: string | undefined;
    do {
      const page = await this.fetchPage(cursor);
      yield page;
      cursor = page.nextCursor ?? undefined;
    } while (cursor);
  }

  async *[Symbol.asyncIterator](): AsyncIterator<T> {
    for await (const page of this.pages()) yield* page.items;
  }

  /** Every item of every page (mind the size of what you ask for). */
  async all(): Promise<T[]> {
    const items: T[] = [];
    for await (const item of this) items.push(item);
    return items;
  }
}
