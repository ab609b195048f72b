import { render } from "preact";
import { language } from "../shared/lang";
import "../shared/theme.css";
import "./console.css";
import { ConsoleApp } from "./ConsoleApp";

document.documentElement.lang = language() === "zh" ? "zh-Hans" : language(); // the catalogue's language
render(<ConsoleApp />, document.getElementById("root")!);
