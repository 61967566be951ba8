package dev.holdfast.faults;

import java.io.IOException;
import java.util.concurrent.TimeUnit;

/** Sends a signal to one process that the suite started, by its pid, with {@code kill(1)}. */
final class Signals {

	private Signals() {
	}

	static void send(long pid, String signal) {
		try {
			Process kill = new ProcessBuilder("kill", "-" + signal, Long.toString(pid)).redirectErrorStream(true)
				.redirectOutput(ProcessBuilder.Redirect.DISCARD)
				.start();
			if (!kill.waitFor(5, TimeUnit.SECONDS)) {
				kill.destroyForcibly();
			}
		}
		catch (IOException ex) {
			throw new IllegalStateException("Could not send SIG" + signal + " to " + pid, ex);
		}
		catch (InterruptedException ex) {
			Thread.currentThread().interrupt();
		}
	}

}
