package dev.holdfast.sample;

import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.context.event.ApplicationEnvironmentPreparedEvent;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.web.server.context.WebServerPortFileWriter;
import org.springframework.context.ApplicationListener;
import org.springframework.core.env.CommandLinePropertySource;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.PropertySource;

/**
 * Holdfast's sample: an inventory whose reservations are serialised per SKU across instances and
 * fenced at the database, and a job that runs on one instance per tick. Several instances share
 * one database: by default an H2 file database that the first instance serves to the others.
 */
@SpringBootApplication
@EnableConfigurationProperties(SampleProperties.class)
public class SampleApplication {

	/**
	 * The profiles {@code application.yml} defines, each with the lock backend it puts the locks
	 * in. Without a profile the locks are in the embedded H2 database ({@code jdbc}).
	 */
	public static final Map<String, String> PROFILE_BACKENDS;

	static {
		Map<String, String> backends = new LinkedHashMap<>();
		backends.put("redis", "redis");
		backends.put("redlock", "redlock");
		backends.put("zookeeper", "zookeeper");
		backends.put("postgres", "jdbc");
		PROFILE_BACKENDS = Collections.unmodifiableMap(backends);
	}

	/**
	 * Runs the application. With the environment variable {@code PORTFILE} set, the HTTP port
	 * is written to that file once the server listens (the demo starts instances on port 0).
	 */
	public static void main(String[] args) {
		application().run(args);
	}

	/**
	 * The application as {@link #main} runs it: it fails to start when a profile it was asked
	 * for is not one it defines, or when it was given the demo's {@code --profile} option, rather
	 * than run on the default backend as if nothing had been asked.
	 */
	static SpringApplication application() {
		SpringApplication application = new SpringApplication(SampleApplication.class);
		application.addListeners((ApplicationListener<ApplicationEnvironmentPreparedEvent>) (event) -> checkProfiles(
				event.getEnvironment()));
		if (System.getenv("PORTFILE") != null) {
			application.addListeners(new WebServerPortFileWriter());
		}
		return application;
	}

	private static void checkProfiles(ConfigurableEnvironment environment) {
		PropertySource<?> commandLine = environment.getPropertySources()
			.get(CommandLinePropertySource.COMMAND_LINE_PROPERTY_SOURCE_NAME);
		Object profile = (commandLine != null) ? commandLine.getProperty("profile") : null;
		if (profile != null) {
			throw new IllegalStateException("--profile=" + profile + " is an option of the demo, not of the "
					+ "application, which would run on its default backend: start the application with "
					+ "--spring.profiles.active=" + profile + " (with Maven: -Dspring-boot.run.profiles=" + profile
					+ "), or the demo with -Dspring-boot.run.main-class=dev.holdfast.sample.demo.Demo "
					+ "-Dspring-boot.run.arguments=--profile=" + profile);
		}
		List<String> unknown = Arrays.stream(environment.getActiveProfiles())
			.filter((active) -> !PROFILE_BACKENDS.containsKey(active))
			.toList();
		if (!unknown.isEmpty()) {
			throw new IllegalStateException("The sample defines no profile " + unknown + ": use one of "
					+ PROFILE_BACKENDS.keySet());
		}
	}

}
