/**
 * Once per integration run on PostgreSQL: a template database with every migration applied, so
 * each test file gets a fresh database by a fast `create database … template`.
 */
import { randomBytes } from 'node:crypto';
import postgres from 'postgres';
import type { TestProject } from 'vitest/node';
import { openDatabase } from '@/db';
import { adminUrl, databaseUrl } from './engine';

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | void> {
  if (process.env.TEST_ENGINE !== 'postgres' && project.config.env?.TEST_ENGINE !== 'postgres') return;
  const name = `aws_template_${randomBytes(6).toString('hex')}`;
  const admin = postgres(adminUrl(), { max: 1, onnotice: () => undefined });
  try {
    await admin.unsafe(`create database ${name}`);
  } catch (err) {
    await admin.end();
    throw new Error(
      `Integration tests on PostgreSQL need a server at ${adminUrl()} (set TEST_DATABASE_URL): ${(err as Error).message}`,
    );
  }
  const handle = await openDatabase({ url: databaseUrl(name), poolMax: 1 });
  await handle.migrate();
  await handle.close();
  project.provide('pgTemplate', name);
  return async () => {
    await admin.unsafe(`drop database if exists ${name} with (force)`);
    await admin.end();
  };
}
