import type { ComponentChildren } from 'preact';

/** A column of a {@link Table}: its title, and what a row shows in it. */
export interface Column<T> {
  /** The column's head and each of its cells' `data-label` (shown beside the value on a narrow screen). */
  title: string;
  /** The head as shown, when it is not the title (a visually hidden one, say). */
  head?: ComponentChildren;
  cell: (row: T) => ComponentChildren;
}

/**
 * A table of `rows` that stacks into labelled rows on a narrow screen (`responsive`): the columns
 * are said once, and each cell's label comes from its column. With `empty`, no rows show that
 * sentence instead of an empty table; a column given as `false` is left out.
 */
export function Table<T>({
  columns,
  rows,
  rowKey,
  empty,
  label,
  class: className,
}: {
  columns: (Column<T> | false)[];
  rows: readonly T[];
  rowKey: (row: T) => string | number;
  empty?: ComponentChildren;
  label?: string;
  class?: string;
}) {
  if (rows.length === 0 && empty !== undefined) return <p class="empty">{empty}</p>;
  const shown = columns.filter((column): column is Column<T> => column !== false);
  return (
    <table class={className ? `table responsive ${className}` : 'table responsive'} aria-label={label}>
      <thead>
        <tr>
          {shown.map((column) => (
            <th key={column.title} scope="col">
              {column.head ?? column.title}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((row) => (
          <tr key={rowKey(row)}>
            {shown.map((column) => (
              <td key={column.title} data-label={column.title}>
                {column.cell(row)}
              </td>
            ))}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
