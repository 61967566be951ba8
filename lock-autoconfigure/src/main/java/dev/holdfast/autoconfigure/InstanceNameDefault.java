package dev.holdfast.autoconfigure;

import org.jspecify.annotations.Nullable;

import org.springframework.context.ApplicationContext;
import org.springframework.core.env.Environment;
import org.springframework.util.ClassUtils;

import dev.holdfast.LockConfigurationException;
import dev.holdfast.spi.InstanceNames;

/**
 * {@code holdfast.instance-name}, checked, or its default: {@code <host>:<server.port>} when the
 * context runs a web server on a fixed port, else {@code <pid>@<host>} (a random port,
 * {@code server.port=0}, is not known when the lock template is made).
 */
final class InstanceNameDefault {

	private static final String WEB_SERVER_CONTEXT = "org.springframework.boot.web.server.context."
			+ "WebServerApplicationContext";

	private InstanceNameDefault() {
	}

	static String resolve(HoldfastProperties properties, ApplicationContext context, Environment environment) {
		String configured = properties.getInstanceName();
		if (configured != null) {
			try {
				return InstanceNames.check(configured);
			}
			catch (IllegalArgumentException ex) {
				throw new LockConfigurationException("Invalid holdfast.instance-name: " + ex.getMessage(),
						"Set holdfast.instance-name to a name of letters, digits and '.', '_', '-', ':', '@', '/' "
								+ "(at most " + InstanceNames.MAX_LENGTH + "), or remove it to use the default.");
			}
		}
		return InstanceNames.defaultName(webServerPort(context, environment));
	}

	private static @Nullable Integer webServerPort(ApplicationContext context, Environment environment) {
		ClassLoader classLoader = context.getClassLoader();
		if (!ClassUtils.isPresent(WEB_SERVER_CONTEXT, classLoader)) {
			return null;
		}
		Class<?> webServerContext = ClassUtils.resolveClassName(WEB_SERVER_CONTEXT, classLoader);
		if (!webServerContext.isInstance(context)) {
			return null;
		}
		Integer port = environment.getProperty("server.port", Integer.class, 8080);
		return (port > 0) ? port : null;
	}

}
