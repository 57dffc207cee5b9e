import AgentPanel from "./agent-panel";

export default function Agent() {
  return <AgentPanel />;
}
