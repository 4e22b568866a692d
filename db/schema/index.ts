/** The whole schema, one file per aggregate. drizzle-kit reads this file to generate migrations. */
export * from './workspaces';
export * from './api-keys';
export * from './genesis';
export * from './ledger';
export * from './idempotency';
export * from './work';
export * from './runs';
export * from './decisions';
export * from './decision-policy';
export * from './artifact-types';
export * from './rate-limits';
export * from './webhooks';
export * from './job-leases';
export * from './tree';
export * from './passkeys';
export * from './artifacts';
export * from './grant-keys';
