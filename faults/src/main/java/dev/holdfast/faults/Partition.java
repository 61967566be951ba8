package dev.holdfast.faults;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.IntStream;

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

	/** Cuts every connection to and from the given ports on loopback, both ways. */
	public static Partition ports(int... ports) throws IOException {
		String list = portList(ports);
		return install("ports " + list,
				List.of(dropping(List.of("INPUT", "-i", "lo", "-p", "tcp", "-m", "multiport", "--dports", list)),
						dropping(List.of("INPUT", "-i", "lo", "-p", "tcp", "-m", "multiport", "--sports", list))));
	}

	/**
	 * Cuts the connections of processes running with group id {@code gid} to the given ports,
	 * both ways, and nobody else's: the first packet such a process sends on a connection marks
	 * the connection, and every packet of a marked connection is dropped, that first one too. A
	 * connection the process opens during the partition is never established.
	 */
	public static Partition client(int gid, int... ports) throws IOException {
		String list = portList(ports);
		String mark = "0x" + Integer.toHexString(MARKS.getAndIncrement());
		// Each rule is inserted at the top: the marking rule, inserted last, comes first.
		return install("group " + gid + " to ports " + list,
				List.of(dropping(List.of("OUTPUT", "-o", "lo", "-m", "connmark", "--mark", mark)),
						dropping(List.of("INPUT", "-i", "lo", "-m", "connmark", "--mark", mark)),
						withComment(List.of("OUTPUT", "-o", "lo", "-p", "tcp", "-m", "multiport", "--dports", list,
								"-m", "owner", "--gid-owner", Integer.toString(gid), "-j", "CONNMARK",
								"--set-mark", mark))));
	}

	/**
	 * Removes the rules, all at once; the connections that hung carry on when TCP next
	 * retransmits what was dropped.
	 */
	@Override
	public void close() {
		if (!ACTIVE.remove(this)) {
			return;
		}
		List<String> deletions = new ArrayList<>();
		for (int i = this.rules.size() - 1; i >= 0; i--) {
			deletions.add("-D " + String.join(" ", this.rules.get(i)));
		}
		String failure;
		try {
			Result result = restore(deletions);
			failure = (result.exitCode() == 0) ? null : result.output().strip();
		}
		catch (IOException ex) {
			failure = ex.getMessage();
		}
		if (failure != null) {
			throw new IllegalStateException("Could not remove the " + this + " (" + failure
					+ "); remove these rules by hand: iptables " + String.join("; iptables ", deletions));
		}
	}

	@Override
	public String toString() {
		return "partition of " + this.description;
	}

	// All rules in one iptables-restore: the partition starts at one instant, and never half.
	private static Partition install(String description, List<List<String>> rules) throws IOException {
		List<String> insertions = new ArrayList<>();
		for (List<String> rule : rules) {
			insertions.add("-I " + String.join(" ", rule));
		}
		Result result = restore(insertions);
		if (result.exitCode() != 0) {
			throw new IllegalStateException("iptables-restore of " + insertions + " failed: " + result.output().strip());
		}
		Partition partition = new Partition(description, rules);
		ACTIVE.add(partition);
		return partition;
	}

	private static String portList(int... ports) {
		if (ports.length == 0 || ports.length > 15) {
			throw new IllegalArgumentException("A partition cuts 1 to 15 ports, not " + ports.length);
		}
		return String.join(",", IntStream.of(ports).mapToObj(Integer::toString).toList());
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

	private static Result restore(List<String> lines) throws IOException {
		String input = "*filter\n" + String.join("\n", lines) + "\nCOMMIT\n";
		return run(List.of("iptables-restore", "-w", "5", "--noflush"), input);
	}

	private static Result iptables(List<String> arguments) throws IOException {
		List<String> command = new ArrayList<>(List.of("iptables", "-w", "5"));
		command.addAll(arguments);
		return run(command, "");
	}

	// -w: wait for the xtables lock rather than fail when another iptables runs at the same time.
	private static Result run(List<String> command, String input) throws IOException {
		Process process = new ProcessBuilder(command).redirectErrorStream(true).start();
		try {
			try (OutputStream stdin = process.getOutputStream()) {
				stdin.write(input.getBytes(StandardCharsets.UTF_8));
			}
			String output = new String(process.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
			if (!process.waitFor(10, TimeUnit.SECONDS)) {
				process.destroyForcibly();
				return new Result(-1, command.get(0) + " did not finish within 10s");
			}
			return new Result(process.exitValue(), output);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
			process.destroyForcibly();
			throw new IOException("Interrupted while running " + command.get(0), ex);
		}
	}

	private record Result(int exitCode, String output) {
	}

}
