package com.example;

/** An application's account, keyed by its id. */
public record Account(String id) {
}
