package dev.holdfast.faults;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A silent network partition on loopback: iptables rules that drop (never reject) TCP packets,
 * so that established connections hang and new ones time out, as behind a dead switch; no
 * reset, no error reaches either side. A partition lasts until {@link #close()}, which a fault
 * calls in a {@code finally} block; a shutdown hook removes the rules of partitions still in
 * place when the controlling JVM exits. Every rule carries the comment {@value #COMMENT} and
 * only the rules added here are ever removed.
 * <p>
 * Needs root and iptables ({@code apt-get install iptables}); {@link #unavailable()} says why
 * not.
 */
public final class Partition implements AutoCloseable {

	static final String COMMENT = "holdfast-faults";

	private static final Set<Partition> ACTIVE = ConcurrentHashMap.newKeySet();

	// Connection marks of client partitions: one per partition, so partitions never share one.
	private static final AtomicInteger MARKS = new AtomicInteger(0x4f10);

	static {
		Runtime.getRuntime().addShutdownHook(new Thread(Partition::healAll, "faults-partitions"));
	}

	private final String description;

	// Each rule as iptables arguments after -I/-D, in the order they were inserted.
	private final List<List<String>> rules;

	private Partition(String description, List<List<String>> rules) {
		this.description = description;
		this.rules = rules;
	}

	/** Why partitions cannot be made here, or empty when they can. */
	public static Optional<String> unavailable() {
		try {
			Result result = iptables(List.of("-S", "INPUT"));
			return (result.exitCode() == 0) ? Optional.empty()
					: Optional.of("iptables -S failed (partitions need root): " + result.output().strip());
		}
		catch (IOException ex) {
			return Optional.of("iptables not found (" + ex.getMessage() + "): apt-get install iptables");
		}
	}

	/** Cuts every connection to and from {@code port} on loopback, both ways. */
	public static Partition port(int port) throws IOException {
		String p = Integer.toString(port);
		return install("port " + port,
				List.of(List.of("INPUT", "-i", "lo", "-p", "tcp", "--dport", p), List.of("INPUT", "-i", "lo", "-p",
						"tcp", "--sport", p)).stream().map(Partition::dropping).toList());
	}

	/**
	 * Cuts the connections of processes running with group id {@code gid} to {@code port}, both
	 * ways, and nobody else's: the first packet such a process sends on a connection marks the
	 * connection, and every packet of a marked connection is dropped. A connection the process
	 * opens during the partition is marked by its first packet and never established.
	 */
	public static Partition client(int gid, int port) throws IOException {
		String mark = "0x" + Integer.toHexString(MARKS.getAndIncrement());
		List<List<String>> rules = new ArrayList<>();
		rules.add(dropping(List.of("INPUT", "-i", "lo", "-m", "connmark", "--mark", mark)));
		rules.add(dropping(List.of("OUTPUT", "-o", "lo", "-m", "connmark", "--mark", mark)));
		// Inserted last, so it comes first: the packet that marks a connection is dropped too.
		rules.add(withComment(List.of("OUTPUT", "-o", "lo", "-p", "tcp", "--dport", Integer.toString(port), "-m",
				"owner", "--gid-owner", Integer.toString(gid), "-j", "CONNMARK", "--set-mark", mark)));
		return install("group " + gid + " to port " + port, rules);
	}

	/** Removes the rules; the connections that hung carry on (TCP retransmits what was dropped). */
	@Override
	public void close() {
		if (!ACTIVE.remove(this)) {
			return;
		}
		List<String> failures = new ArrayList<>();
		for (int i = this.rules.size() - 1; i >= 0; i--) {
			List<String> arguments = new ArrayList<>(List.of("-D"));
			arguments.addAll(this.rules.get(i));
			try {
				Result result = iptables(arguments);
				if (result.exitCode() != 0) {
					failures.add(String.join(" ", arguments) + ": " + result.output().strip());
				}
			}
			catch (IOException ex) {
				failures.add(String.join(" ", arguments) + ": " + ex.getMessage());
			}
		}
		if (!failures.isEmpty()) {
			throw new IllegalStateException("Could not remove the partition of " + this.description
					+ "; remove these iptables rules by hand: " + failures);
		}
	}

	@Override
	public String toString() {
		return "partition of " + this.description;
	}

	private static Partition install(String description, List<List<String>> rules) throws IOException {
		Partition partition = new Partition(description, new ArrayList<>());
		ACTIVE.add(partition);
		try {
			for (List<String> rule : rules) {
				List<String> arguments = new ArrayList<>(List.of("-I"));
				arguments.addAll(rule);
				Result result = iptables(arguments);
				if (result.exitCode() != 0) {
					throw new IllegalStateException(
							"iptables " + String.join(" ", arguments) + " failed: " + result.output().strip());
				}
				partition.rules.add(rule);
			}
			return partition;
		}
		catch (IOException | RuntimeException ex) {
			partition.close();
			throw ex;
		}
	}

	private static List<String> dropping(List<String> match) {
		List<String> rule = new ArrayList<>(match);
		rule.addAll(List.of("-j", "DROP"));
		return withComment(rule);
	}

	private static List<String> withComment(List<String> rule) {
		List<String> commented = new ArrayList<>(rule);
		commented.addAll(1, List.of("-m", "comment", "--comment", COMMENT));
		return commented;
	}

	private static void healAll() {
		for (Partition partition : ACTIVE) {
			try {
				partition.close();
			}
			catch (RuntimeException ex) {
				System.err.println(ex.getMessage());
			}
		}
	}

	// -w: wait for the xtables lock rather than fail when another iptables runs at the same time.
	private static Result iptables(List<String> arguments) throws IOException {
		List<String> command = new ArrayList<>(List.of("iptables", "-w", "5"));
		command.addAll(arguments);
		Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
		try {
			String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			if (!process.waitFor(10, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				return new Result(-1, "iptables did not finish within 10s");
			}
			return new Result(process.exitValue(), output);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			process.destroyForcibly();
			throw new IOException("Interrupted while running iptables", ex);
		}
	}

	private record Result(int exitCode, String output) {
	}

}
