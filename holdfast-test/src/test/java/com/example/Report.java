package com.example;

/** An application's report. */
public record Report(String content) {
}
