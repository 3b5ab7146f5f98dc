import { createTheme, DEFAULT_THEME, Drawer, Modal, type CSSVariablesResolver } from "@mantine/core";

// Mantine's defaults fall short of WCAG AA contrast (4.5:1) for white on the primary color, for dimmed text, for a
// field's error and for text on the light variant (alerts, badges); darker shades pass, and the tests run axe on
// every page.
export const theme = createTheme({
  primaryShade: { light: 8, dark: 8 },
  respectReducedMotion: true,
  // The close buttons are icons: they need a name.
  components: {
    Modal: Modal.extend({ defaultProps: { closeButtonProps: { "aria-label": "Close dialog" } } }),
    Drawer: Drawer.extend({ defaultProps: { closeButtonProps: { "aria-label": "Close drawer" } } }),
  },
});

const lightVariantText = Object.fromEntries(
  Object.keys(DEFAULT_THEME.colors).map((color) => [
    `--mantine-color-${color}-light-color`,
    `color-mix(in srgb, var(--mantine-color-${color}-9), black 25%)`,
  ]),
);

export const cssVariables: CSSVariablesResolver = () => ({
  variables: {},
  light: {
    "--mantine-color-dimmed": "var(--mantine-color-gray-7)",
    // A field's error message, in a red that passes on white.
    "--mantine-color-error": "var(--mantine-color-red-9)",
    ...lightVariantText,
  },
  dark: { "--mantine-color-dimmed": "var(--mantine-color-dark-1)" },
});
