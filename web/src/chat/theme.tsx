// Light, dark, or the system's: kept in localStorage, applied as <html data-theme>.
import { useState } from "preact/hooks";

type Theme = "system" | "light" | "dark";
const SLOT = "loopwright.theme";
const NEXT: Record<Theme, Theme> = { system: "light", light: "dark", dark: "system" };

export function applyStoredTheme(): void {
  apply((localStorage.getItem(SLOT) as Theme | null) ?? "system");
}

function apply(theme: Theme): void {
  if (theme === "system") delete document.documentElement.dataset.theme;
  else document.documentElement.dataset.theme = theme;
}

export function ThemeToggle() {
  const [theme, setTheme] = useState<Theme>(() => (localStorage.getItem(SLOT) as Theme | null) ?? "system");
  return (
    <button
      type="button"
      class="icon theme-toggle"
      title={`Theme: ${theme} (click to change)`}
      aria-label={`Theme: ${theme}`}
      onClick={() => {
        const next = NEXT[theme];
        localStorage.setItem(SLOT, next);
        apply(next);
        setTheme(next);
      }}
    >
      {theme === "dark" ? "☾" : theme === "light" ? "☀" : "◐"}
    </button>
  );
}
