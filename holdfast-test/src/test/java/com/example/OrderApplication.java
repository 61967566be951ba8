package com.example;

import org.springframework.boot.autoconfigure.SpringBootApplication;

/** The application of the README's example test ({@code OrderServiceTests}). */
@SpringBootApplication
public class OrderApplication {

}
