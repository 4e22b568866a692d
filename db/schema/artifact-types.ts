/**
 * The global catalog of artifact types (what agents may register as `artifact_type`). Not
 * workspace data: one catalog for every caller, versioned and loaded by a migration.
 */
import { boolean, integer, pgTable, text } from 'drizzle-orm/pg-core';

export const artifactTypes = pgTable('artifact_types', {
  typeCode: text('type_code').primaryKey(),
  label: text('label').notNull(),
  summary: text('summary').notNull(),
  domain: text('domain').notNull(),
  stage: text('stage').notNull(),
  workflow: text('workflow').notNull(),
  defaultPersona: text('default_persona').notNull(),
  tags: text('tags').array().notNull(),
  /** False for types that describe run health rather than a produced deliverable. */
  isDeliverable: boolean('is_deliverable').notNull(),
  /** The catalog release that last changed this type. */
  catalogVersion: integer('catalog_version').notNull(),
  sortOrder: integer('sort_order').notNull(),
});
