/** A signed-in person who belongs to no workspace (removed from their last one, or not yet invited). */
export function NoWorkspace() {
  return (
    <main>
      <h1>No workspace</h1>
      <p>You are not a member of any workspace. Ask a workspace owner for an invitation, or create a workspace of your own.</p>
      <p>
        <a href="/workspaces/new">Create a workspace</a>
      </p>
    </main>
  );
}
