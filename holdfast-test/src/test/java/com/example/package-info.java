/**
 * The application types that the snippets of the README and of docs/ (package {@code com.example}) refer to
 * without importing them: they stand for the reader's own code. See
 * {@code dev.holdfast.docs.ReadmeSnippetsTests}.
 */
package com.example;
