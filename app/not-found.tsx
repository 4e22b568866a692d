/** Every 404 of the app: a page that does not exist, or one of a workspace the person is not in (never said which). */
export default function NotFound() {
  return (
    <main className="narrow">
      <h1>Not found</h1>
      <p>There is nothing here for you: the page does not exist, or it belongs to a workspace you are not a member of.</p>
      <p>
        <a href="/decisions">Go to your decisions</a>
      </p>
    </main>
  );
}
