"""Worker entry modules. Each stays thin: parse, call the library, map errors."""
