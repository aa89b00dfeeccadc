import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';

/** Languages whose blocks are commands: each must say whether the docs test runs it. */
export const SHELL_LANGUAGES: ReadonlySet<string> = new Set(['sh', 'bash', 'shell', 'zsh', 'console', 'shell-session']);

/** What a fenced block's info string says after its language (see docs/architecture.md). */
export type BlockTag =
  | { kind: 'runnable'; id?: string; requires: string[] }
  | { kind: 'not-runnable'; reason: string }
  | { kind: 'untagged' }
  | { kind: 'malformed'; problem: string };

export interface FencedBlock {
  /** Path relative to the repository root. */
  file: string;
  /** 1-based line of the opening fence. */
  line: number;
  language: string;
  info: string;
  tag: BlockTag;
  /** The block's text, without the fences and the fence's indentation. */
  code: string;
}

export interface MarkdownLink {
  file: string;
  line: number;
  target: string;
  image: boolean;
}

/** README.md and every Markdown file under docs/, relative to `root`. */
export function documentationFiles(root: string): string[] {
  const found: string[] = [];
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) walk(path);
      else if (entry.name.endsWith('.md')) found.push(relative(root, path));
    }
  };
  walk(join(root, 'docs'));
  return ['README.md', ...found.sort()];
}

/** Reads the words after the language: `runnable [id=…] [requires=…]` or `not-runnable <why>`. */
export function parseTag(words: string[]): BlockTag {
  const [first, ...rest] = words;
  if (first === undefined) return { kind: 'untagged' };
  if (first === 'not-runnable') {
    return rest.length
      ? { kind: 'not-runnable', reason: rest.join(' ') }
      : { kind: 'malformed', problem: 'not-runnable needs a reason after it' };
  }
  if (first !== 'runnable') return { kind: 'untagged' };
  const tag: { kind: 'runnable'; id?: string; requires: string[] } = { kind: 'runnable', requires: [] };
  for (const word of rest) {
    const [key, value] = word.split('=', 2);
    if (key === 'id' && value) tag.id = value;
    else if (key === 'requires' && value) tag.requires.push(...value.split(','));
    else return { kind: 'malformed', problem: `unknown word "${word}" after runnable (id=NAME, requires=COMMAND)` };
  }
  return tag;
}

const FENCE = /^( *)(`{3,}|~{3,})(.*)$/;

/**
 * The fenced code blocks of a Markdown text, indented ones (inside list items) included. A block
 * ends at a fence of the same character at least as long, as CommonMark has it.
 */
export function fencedBlocks(file: string, text: string): FencedBlock[] {
  const lines = text.split('\n');
  const blocks: FencedBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = FENCE.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, rawInfo] = open as unknown as [string, string, string, string];
    const info = rawInfo.trim();
    const body: string[] = [];
    let j = i + 1;
    for (; j < lines.length; j++) {
      const close = /^ *(`{3,}|~{3,})\s*$/.exec(lines[j]!);
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length) break;
      body.push(lines[j]!.startsWith(indent) ? lines[j]!.slice(indent.length) : lines[j]!.trimStart());
    }
    const [language = '', ...words] = info.split(/\s+/).filter(Boolean);
    blocks.push({ file, line: i + 1, language, info, tag: parseTag(words), code: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** The text with every fenced block's lines blanked: line numbers stay. */
function withoutFences(text: string): string {
  const lines = text.split('\n');
  for (const block of fencedBlocks('', text)) {
    const end = block.line + block.code.split('\n').length;
    for (let k = block.line - 1; k <= end && k < lines.length; k++) lines[k] = '';
  }
  return lines.join('\n');
}

/** The text outside code: fenced blocks and inline code spans blanked (``` inside ```` ```` too). */
function prose(text: string): string {
  return withoutFences(text).replace(/(`+)([^`]|(?!\1)`+)*?\1(?!`)/g, (span) => span.replace(/[^\n]/g, ' '));
}

/** Inline links and images outside code: `[text](target)` and `![alt](target)`. */
export function markdownLinks(file: string, text: string): MarkdownLink[] {
  const plain = prose(text);
  const links: MarkdownLink[] = [];
  for (const match of plain.matchAll(/(!?)\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) {
    links.push({
      file,
      line: plain.slice(0, match.index).split('\n').length,
      target: match[2]!,
      image: match[1] === '!',
    });
  }
  return links;
}

/** The anchors GitHub gives a file's headings (`## Flow control` → `flow-control`, repeats `-1`, `-2`). */
export function headingAnchors(text: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const line of withoutFences(text).replace(/`/g, '').split('\n')) {
    const heading = /^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$/.exec(line);
    if (!heading) continue;
    const words = heading[1]!
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .replace(/[*~]/g, '')
      .toLowerCase();
    const slug = words.replace(/[^\p{L}\p{M}\p{N}\p{Pc}\- ]/gu, '').replace(/ /g, '-');
    const count = seen.get(slug) ?? 0;
    seen.set(slug, count + 1);
    anchors.add(count ? `${slug}-${count}` : slug);
  }
  return anchors;
}

export function readText(root: string, file: string): string {
  return readFileSync(join(root, file), 'utf8');
}
