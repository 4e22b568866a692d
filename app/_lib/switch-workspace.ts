/**
 * In the browser: makes `workspaceId` current and opens `returnTo`, the way the header's switcher
 * does (a form POSTed to /workspaces/switch; a GET there changes nothing).
 */
export function submitWorkspaceSwitch(workspaceId: string, returnTo: string): void {
  const form = document.createElement('form');
  form.method = 'post';
  form.action = '/workspaces/switch';
  form.hidden = true;
  const fields: [string, string][] = [
    ['workspace', workspaceId],
    ['return', returnTo],
  ];
  for (const [name, value] of fields) {
    const input = document.createElement('input');
    input.type = 'hidden';
    input.name = name;
    input.value = value;
    form.append(input);
  }
  document.body.append(form);
  form.submit();
}
