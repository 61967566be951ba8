package dev.holdfast.sample;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.server.context.WebServerPortFileWriter;

/**
 * Holdfast's sample: an inventory whose reservations are serialised per SKU across instances and
 * fenced at the database, and a job that runs on one instance per tick. Several instances share
 * one database: by default an H2 file database that the first instance serves to the others.
 */
@SpringBootApplication
@EnableConfigurationProperties(SampleProperties.class)
public class SampleApplication {

	/**
	 * Runs the application. With the environment variable {@code PORTFILE} set, the HTTP port
	 * is written to that file once the server listens (the demo starts instances on port 0).
	 */
	public static void main(String[] args) {
		SpringApplication application = new SpringApplication(SampleApplication.class);
		if (System.getenv("PORTFILE") != null) {
			application.addListeners(new WebServerPortFileWriter());
		}
		application.run(args);
	}

}
