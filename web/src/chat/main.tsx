import { render } from "preact";
import "../shared/theme.css";

function App() {
  return <main class="placeholder">loopwright chat</main>;
}

render(<App />, document.getElementById("root")!);
