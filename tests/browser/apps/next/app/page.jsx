// A server component rendering docs/bundlers.md's client component (the test writes it
// to memory-panel.jsx from the page).
import Memories from "./memory-panel";

export default function Home() {
  return (
    <main>
      <h1>Memory</h1>
      <Memories />
    </main>
  );
}
