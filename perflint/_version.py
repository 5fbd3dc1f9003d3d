"""The version, in a module of its own: every part of perflint can name it without importing the
package's face (which re-exports the API), and the build reads it from here."""

__version__ = "0.1.0"
