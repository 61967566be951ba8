package dev.holdfast.spi;

import java.net.InetAddress;
import java.util.regex.Pattern;

import org.jspecify.annotations.Nullable;

/**
 * Readable names of the instances (processes) that share a backend, and where they are found in
 * an owner token. The engine makes every owner token {@code <128 random bits>.<counter>@<instance>}
 * (base64url, then decimal digits, then the instance name), so that a backend that stores the
 * owner token beside the lock (Redis, Redlock, jdbc, memory) also stores which instance holds it,
 * without a column or a round trip of its own; {@link #of(String)} reads it back. An operator is
 * shown the name, never the token.
 */
public final class InstanceNames {

	/** The longest instance name: an owner token must fit a 255-character column. */
	public static final int MAX_LENGTH = 64;

	/** Letters, digits and {@code . _ - : @ /}: no spaces, braces or {@code *}, which backends use. */
	private static final Pattern VALID = Pattern.compile("[A-Za-z0-9._:@/-]{1," + MAX_LENGTH + "}");

	private static final Pattern INVALID_CHARACTER = Pattern.compile("[^A-Za-z0-9._:@/-]");

	private InstanceNames() {
	}

	/**
	 * Returns {@code name} if it can name an instance.
	 * @throws IllegalArgumentException naming the rule otherwise
	 */
	public static String check(@Nullable String name) {
		if (name == null || !VALID.matcher(name).matches()) {
			throw new IllegalArgumentException("An instance name has 1 to " + MAX_LENGTH
					+ " letters, digits or '.', '_', '-', ':', '@', '/'; was '" + name + "'");
		}
		return name;
	}

	/**
	 * The default name of this process: {@code <host>:<port>} when it serves HTTP on a known
	 * port, otherwise {@code <pid>@<host>}; characters an instance name cannot hold become
	 * {@code -}, and a long host name is cut.
	 * @param port the web server's port, or {@code null} (no web server, or a random port)
	 */
	public static String defaultName(@Nullable Integer port) {
		String host = Host.NAME;
		return (port != null && port > 0) ? host + ":" + port : ProcessHandle.current().pid() + "@" + host;
	}

	/**
	 * The instance named in an owner token made by the engine, or {@code null} for a token made
	 * otherwise (by a test, or another library).
	 */
	public static @Nullable String of(String owner) {
		int at = owner.indexOf('@');
		return (at > 0 && at < owner.length() - 1) ? owner.substring(at + 1) : null;
	}

	/**
	 * The holder a listing shows for a read-held key whose backend counts its live readers but
	 * does not name their instances: {@code <count> readers} (RWL-27, RWL-38, RWL-17).
	 */
	public static String readers(long count) {
		return count + " readers";
	}

	/** This host's name, looked up once (a lookup may wait for DNS). */
	private static final class Host {

		static final String NAME = lookUp();

		private static String lookUp() {
			String host = System.getenv("HOSTNAME");
			if (host == null || host.isBlank()) {
				try {
					host = InetAddress.getLocalHost().getHostName();
				}
				catch (Exception ex) {
					host = "localhost";
				}
			}
			host = INVALID_CHARACTER.matcher(host).replaceAll("-");
			return host.substring(0, Math.min(host.length(), 40));
		}

	}

}
