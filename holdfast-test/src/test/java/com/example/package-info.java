/**
 * The application types that the README's snippets (package {@code com.example}) refer to
 * without importing them: they stand for the reader's own code. See
 * {@code dev.holdfast.docs.ReadmeSnippetsTests}.
 */
package com.example;
