import LangChainPanel from "./langchain-panel";

export default function LangChain() {
  return <LangChainPanel />;
}
