// Small line icons as inline SVG (no icon font, no emoji font needed; allowed by the CSP).
import type { JSX } from "preact";

function Icon({ children }: { children: JSX.Element | JSX.Element[] }) {
  return (
    <svg class="svg-icon" viewBox="0 0 24 24" width="16" height="16" fill="none" stroke="currentColor" stroke-width="2" stroke-linecap="round" stroke-linejoin="round" aria-hidden="true">
      {children}
    </svg>
  );
}

export const ThumbUp = () => (
  <Icon>
    <path d="M7 10v11H3V10h4z" />
    <path d="M7 10l4-8a3 3 0 0 1 3 3v4h5.5a2 2 0 0 1 2 2.3l-1.4 8A2 2 0 0 1 18.1 21H7" />
  </Icon>
);
export const ThumbDown = () => (
  <Icon>
    <path d="M17 14V3h4v11h-4z" />
    <path d="M17 14l-4 8a3 3 0 0 1-3-3v-4H4.5a2 2 0 0 1-2-2.3l1.4-8A2 2 0 0 1 5.9 3H17" />
  </Icon>
);
export const Trash = () => (
  <Icon>
    <path d="M3 6h18" />
    <path d="M8 6V4h8v2" />
    <path d="M6 6l1 15h10l1-15" />
  </Icon>
);
export const Pencil = () => (
  <Icon>
    <path d="M4 20h4L19 9l-4-4L4 16v4z" />
  </Icon>
);
export const Clip = () => (
  <Icon>
    <path d="M21 11l-8.5 8.5a5 5 0 0 1-7-7L14 4a3.5 3.5 0 0 1 5 5l-8.5 8.5a2 2 0 0 1-3-3L15 7" />
  </Icon>
);
export const Menu = () => (
  <Icon>
    <path d="M4 6h16M4 12h16M4 18h16" />
  </Icon>
);
export const Download = () => (
  <Icon>
    <path d="M12 4v12M7 11l5 5 5-5M5 20h14" />
  </Icon>
);
export const Speaker = () => (
  <Icon>
    <path d="M11 5L6 9H2v6h4l5 4V5z" />
    <path d="M15.5 8.5a5 5 0 0 1 0 7" />
    <path d="M19 5a10 10 0 0 1 0 14" />
  </Icon>
);
export const Mic = () => (
  <Icon>
    <rect x="9" y="2" width="6" height="12" rx="3" />
    <path d="M5 10a7 7 0 0 0 14 0" />
    <path d="M12 17v5" />
  </Icon>
);
export const Pin = () => (
  <Icon>
    <path d="M9 4h6l-1 6 4 4H6l4-4-1-6z" />
    <path d="M12 14v7" />
  </Icon>
);
