import { type Document, isCollection, isScalar, type LineCounter, type Node, visit, type YAMLError } from 'yaml';

/** The closing character of each opening one a YAML (or JSON) file may leave open. */
const CLOSERS: Record<string, string> = { '[': ']', '{': '}', '"': '"', "'": "'" };

/**
 * What is wrong with a file the YAML parser refused, and on which line, in a user's words: an
 * unclosed `[` or quote is named on the line that opens it (the parser notices only at the end of
 * the file), a line indented too far on its own line, and the parser's terms (flow collection,
 * implicit key, compact mapping) are left out.
 */
export function describeYamlError(
  error: YAMLError,
  doc: Document,
  text: string,
  lines: LineCounter,
): { line: number; text: string } {
  const [start] = error.pos;
  const line = lines.linePos(start).line;
  const message = error.message.split('\n')[0]!.replace(/ at line \d+, column \d+:?$/, '');
  const unclosed = /end with a ([\]}])|Missing closing (["'])quote/.exec(message);
  if (unclosed) {
    const closer = unclosed[1] ?? unclosed[2]!;
    const opener = Object.keys(CLOSERS).find((o) => CLOSERS[o] === closer)!;
    const opened = openedAt(doc, text, opener, start);
    // Closed after all: the line that closes it is not indented enough to be inside it.
    if (opened === undefined) return { line, text: 'this line is not indented like the lines above it' };
    const what =
      opener === '"' || opener === "'"
        ? `a ${opener} quote opened on this line is never closed`
        : `a "${opener}" opened on this line is never closed with "${closer}"`;
    return { line: lines.linePos(opened).line, text: what };
  }
  const lineEnd = text.indexOf('\n', start);
  const restOfLine = text.slice(start, lineEnd === -1 ? undefined : lineEnd);
  switch (error.code) {
    case 'TAB_AS_INDENT':
      return { line, text: 'a tab indents this line: indent with spaces' };
    case 'DUPLICATE_KEY':
      return {
        line,
        text: `the key "${/^["']?([^"':]*)/.exec(restOfLine)?.[1]?.trim() ?? ''}" appears twice at the same level`,
      };
    case 'BAD_INDENT':
      return { line, text: 'this line is not indented like the lines above it' };
    case 'BLOCK_AS_IMPLICIT_KEY':
      if (/^A block sequence/.test(message))
        return { line, text: 'a list item ("- ") where "key: value" lines are expected: is it indented right?' };
      // `schedule: cron: 0 9 * * *`: a second "key: value" on the line; without one, the next line is indented too far.
      if (/:(\s|$)/.test(restOfLine))
        return { line, text: 'a value holds another "key: value": put it on a line of its own, or quote the value' };
      return {
        line: nextLineWithText(text, lines, start) ?? line,
        text: 'this line is indented more than the lines above it',
      };
    case 'MULTILINE_IMPLICIT_KEY':
      return { line, text: 'a key runs onto the next line: is a ":" missing, or the next line indented too far?' };
    case 'BAD_SCALAR_START':
      return { line, text: `a value cannot start with "${message.slice(-1)}" unless it is in quotes` };
    case 'BAD_DQ_ESCAPE':
      return {
        line,
        text: 'a "double-quoted" value has a \\ escape YAML does not know: use single quotes, or write \\\\',
      };
    case 'UNEXPECTED_TOKEN':
      return {
        line,
        text: `unexpected "${/^Unexpected (\S+)/.exec(message)?.[1] ?? restOfLine.trim().charAt(0)}" here`,
      };
    default:
      // The other codes are told apart by their message below, or in the parser's own words.
      break;
  }
  if (/^Sequence item without - indicator|must start at the same column/.test(message))
    return { line, text: 'this line is not indented like the lines above it' };
  if (/^Implicit map keys need to be followed by map values/.test(message)) {
    return { line, text: `"${restOfLine.trim()}" is not "key: value": is a ":" missing?` };
  }
  return { line, text: message.replace(/^./, (c) => c.toLowerCase()) };
}

/** Where the innermost `[`, `{` or quote still open at `position` opens. */
function openedAt(doc: Document, text: string, opener: string, position: number): number | undefined {
  let found: number | undefined;
  visit(doc, (_key, node) => {
    const range = (node as Node | null)?.range;
    if (!range || range[0] > position || text[range[0]] !== opener) return;
    const kind = isCollection(node)
      ? node.flow
      : isScalar(node) && (node.type === 'QUOTE_DOUBLE' || node.type === 'QUOTE_SINGLE');
    // A node cut off by the end of the file (or by the mistake) does not end with its closer.
    const closed = range[1] - range[0] > 1 && text[range[1] - 1] === CLOSERS[opener];
    if (kind && !closed && (found === undefined || range[0] > found)) found = range[0];
  });
  return found;
}

/** The line after the one of `position` that has more than spaces, if any. */
function nextLineWithText(text: string, lines: LineCounter, position: number): number | undefined {
  const match = /\n[ \t]*[^\s]/.exec(text.slice(position));
  return match ? lines.linePos(position + match.index + 1).line : undefined;
}
