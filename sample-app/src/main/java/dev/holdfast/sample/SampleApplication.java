package dev.holdfast.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;

/**
 * Holdfast's sample: an inventory whose reservations are serialised per SKU across instances and
 * fenced at the database, and a job that runs on one instance per tick. Several instances share
 * one database: by default an H2 file database that the first instance serves to the others.
 */
@SpringBootApplication
@EnableConfigurationProperties(SampleProperties.class)
public class SampleApplication {

	public static void main(String[] args) {
		SpringApplication.run(SampleApplication.class, args);
	}

}
