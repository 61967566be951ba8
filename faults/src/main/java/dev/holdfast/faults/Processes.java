package dev.holdfast.faults;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Every process the suite started, so that a shutdown hook can resume (SIGCONT) and kill them by
 * their handles if the controlling JVM exits early. Nothing else is ever signalled.
 */
final class Processes {

	private static final List<Process> STARTED = new CopyOnWriteArrayList<>();

	static {
		Runtime.getRuntime().addShutdownHook(new Thread(Processes::killAll, "faults-cleanup"));
	}

	private Processes() {
	}

	/** The command that starts {@code main} in a client JVM of the suite, on this JVM's class path. */
	static List<String> javaCommand(String main) {
		return List.of(Path.of(System.getProperty("java.home"), "bin", "java").toString(), "-Xmx96m",
				"-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Xshare:auto", "-cp",
				System.getProperty("java.class.path"), main);
	}

	static void register(Process process) {
		STARTED.add(process);
		STARTED.removeIf((p) -> !p.isAlive() && p != process);
	}

	static void killAll() {
		for (Process process : STARTED) {
			if (process.isAlive()) {
				Signals.send(process.pid(), "CONT");
				process.destroyForcibly();
			}
		}
		STARTED.clear();
	}

}
