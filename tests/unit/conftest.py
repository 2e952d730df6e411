"""Unit tests: pure logic, no stack, no network beyond servers a test starts itself."""
