/**
 * A table of records that stays a table on a wide screen and becomes stacked rows on a narrow one
 * (globals.css, `.data-table`): each row a card, each cell led by its column's name. The column
 * names come from one list, so a cell always carries the name of the column it sits in; the
 * header row stays in the page for screen readers, which read the stacked rows as the same table.
 */
import type { ReactNode } from 'react';

export interface Column {
  label: string;
  /** Read out, not shown (a column of buttons). */
  hidden?: boolean;
  /** The row's title when stacked: shown first, bold, without the column's name. */
  lead?: boolean;
}

export interface Row {
  key: string;
  cells: ReactNode[];
  id?: string;
  className?: string;
  testId?: string;
}

export function DataTable(props: {
  caption: ReactNode;
  /** A caption for screen readers only, when a heading above already says it. */
  captionHidden?: boolean;
  columns: Column[];
  rows: Row[];
  /** A name for the page's own styles and its tests (`ledger`). */
  className?: string;
}) {
  const { caption, captionHidden, columns, rows, className } = props;
  return (
    <table className={className ? `data-table ${className}` : 'data-table'}>
      <caption className={captionHidden ? 'visually-hidden' : 'muted'}>{caption}</caption>
      <thead>
        <tr>
          {columns.map((c) => (
            <th key={c.label} scope="col">
              {c.hidden ? <span className="visually-hidden">{c.label}</span> : c.label}
            </th>
          ))}
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.key} id={r.id} className={r.className} data-testid={r.testId}>
            {r.cells.map((cell, i) => {
              const column = columns[i]!;
              return (
                <td
                  key={column.label}
                  data-label={column.hidden || column.lead ? undefined : column.label}
                  className={column.lead ? 'lead' : undefined}
                >
                  <div className="cell">{cell}</div>
                </td>
              );
            })}
          </tr>
        ))}
      </tbody>
    </table>
  );
}
