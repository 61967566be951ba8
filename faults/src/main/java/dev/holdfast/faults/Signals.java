package dev.holdfast.faults;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Sends signals to processes that the suite started, by their pids, with {@code kill(1)}. */
final class Signals {

	private Signals() {
	}

	static void send(long pid, String signal) {
		send(List.of(pid), signal);
	}

	/** Sends a signal to several processes with one {@code kill(1)}, so that they receive it together. */
	static void send(List<Long> pids, String signal) {
		List<String> command = new ArrayList<>(List.of("kill", "-" + signal));
		pids.forEach((pid) -> command.add(Long.toString(pid)));
		try {
			Process kill = new ProcessBuilder(command).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.start();
			if (!kill.waitFor(5, TimeUnit.SECONDS)) {
				kill.destroyForcibly();
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not send SIG" + signal + " to " + pids, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
