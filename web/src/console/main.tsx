import { render } from "preact";
import "../shared/theme.css";
import "./console.css";
import { ConsoleApp } from "./ConsoleApp";

render(<ConsoleApp />, document.getElementById("root")!);
