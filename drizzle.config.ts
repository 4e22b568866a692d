import { defineConfig } from 'drizzle-kit';

// Migrations are generated from db/schema and committed; they run at service start on both engines.
export default defineConfig({
  dialect: 'postgresql',
  schema: './db/schema/index.ts',
  out: './drizzle',
  strict: true,
});
