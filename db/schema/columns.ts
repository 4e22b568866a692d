/** Column builders shared by the aggregate tables (fresh builders on each call). */
import { customType, integer, timestamp, uuid } from 'drizzle-orm/pg-core';
import { workspaces } from './workspaces';

/** A timestamp with time zone and millisecond precision, as the API shows it. */
export const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date', precision: 3 });

/** bytea as a Buffer (postgres.js gives a Buffer, PGlite a Uint8Array). */
export const bytea = customType<{ data: Buffer; driverData: Uint8Array }>({
  dataType: () => 'bytea',
  fromDriver: (value) => Buffer.from(value),
});

/** id, workspace, version (the aggregate's last aggregateVersion), created and updated times. */
export const aggregateColumns = () => ({
  id: uuid('id').primaryKey(),
  workspaceId: uuid('workspace_id')
    .notNull()
    .references(() => workspaces.id),
  version: integer('version').notNull().default(1),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});
