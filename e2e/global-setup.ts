/**
 * Once per end-to-end run: the PostgreSQL server the tests that need one create their databases on
 * (first-run.spec.ts's two instances): TEST_DATABASE_URL or 127.0.0.1:5432 when it answers, else
 * an embedded one started for this run and stopped after it (test/support/postgres-server.ts).
 * The tests read it from TEST_DATABASE_URL, which Playwright passes on to its workers.
 */
import { testPostgres } from '../test/support/postgres-server';

export default async function globalSetup(): Promise<() => Promise<void>> {
  const server = await testPostgres();
  process.env.TEST_DATABASE_URL = server.adminUrl;
  return () => server.stop();
}
