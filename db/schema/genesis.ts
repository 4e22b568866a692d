/**
 * The hash a chain starts from: the previousHash of a workspace's first event, and the head of an
 * empty ledger. A file of its own, free of Drizzle, so that verification's worker threads can
 * load it without the schema.
 */
export const GENESIS_HASH = `sha256:${'0'.repeat(64)}`;
