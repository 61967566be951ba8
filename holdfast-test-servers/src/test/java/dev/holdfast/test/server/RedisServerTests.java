package dev.holdfast.test.server;

import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * {@link RedisServer#builder()}: what the fault suite relies on to keep its Redis processes in
 * its run's directory and clean them up. (The environment option is not checked here: Redis
 * overwrites the environment block of its process with its title.)
 */
class RedisServerTests {

	@TempDir
	Path dir;

	@Test
	void everyProcessGetsTheDirectoryAndTheCallback() {
		List<Process> started = new CopyOnWriteArrayList<>();
		Path data = this.dir.resolve("node");
		try (RedisServer server = RedisServer.builder()
			.directory(data)
			.persistent(true)
			.onStart(started::add)
			.start()) {
			assertThat(started).singleElement().extracting(Process::pid).isEqualTo(server.pid());
			assertThat(data.resolve("redis.log")).exists();
			server.kill();
			server.restart();
			assertThat(server.isRunning()).isTrue();
			assertThat(started).hasSize(2).last().extracting(Process::pid).isEqualTo(server.pid());
			assertThat(data.resolve("appendonlydir")).as("persistent data in the directory").isDirectory();
		}
		assertThat(started).noneMatch(Process::isAlive);
	}

}
