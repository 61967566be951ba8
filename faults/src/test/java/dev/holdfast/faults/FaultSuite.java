package dev.holdfast.faults;

import java.nio.file.Path;

/** Where runs keep their logs: {@code faults.reportDir} (set by the build), else a temp dir. */
final class FaultSuite {

	private FaultSuite() {
	}

	static Path reportDir() {
		String dir = System.getProperty("faults.reportDir");
		return (dir != null) ? Path.of(dir) : Path.of(System.getProperty("java.io.tmpdir"), "holdfast-faults");
	}

}
