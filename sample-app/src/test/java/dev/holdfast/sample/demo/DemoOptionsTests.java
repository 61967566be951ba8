package dev.holdfast.sample.demo;

import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatIllegalArgumentException;

class DemoOptionsTests {

	@Test
	void defaultsStartThreeInstancesOnTheEmbeddedDatabase() {
		DemoOptions options = DemoOptions.parse();
		assertThat(options.instances()).isEqualTo(3);
		assertThat(options.profile()).isNull();
		assertThat(options.freshDatabase()).isTrue();
		assertThat(options.workDir()).isEqualTo(Path.of("target", "holdfast-demo"));
	}

	@Test
	void optionsAreParsed() {
		DemoOptions options = DemoOptions.parse("--instances=5", "--requests=10", "--skus=a, b,a", "--profile=POSTGRES",
				"--backend=jdbc", "--startup-timeout=30s");
		assertThat(options.instances()).isEqualTo(5);
		assertThat(options.requests()).isEqualTo(10);
		assertThat(options.skus()).isEqualTo(List.of("a", "b"));
		assertThat(options.profile()).isEqualTo("postgres");
		assertThat(options.freshDatabase()).isFalse();
		assertThat(options.backend()).isEqualTo("jdbc");
		assertThat(options.startupTimeout()).hasSeconds(30);
	}

	@Test
	void eachProfileExpectsTheBackendItPutsTheLocksIn() {
		assertThat(DemoOptions.parse().expectedBackend()).isEqualTo("jdbc");
		assertThat(DemoOptions.parse("--profile=zookeeper").expectedBackend()).isEqualTo("zookeeper");
		assertThat(DemoOptions.parse("--profile=redlock").expectedBackend()).isEqualTo("redlock");
		assertThat(DemoOptions.parse("--profile=redis").expectedBackend()).isEqualTo("redis");
		assertThat(DemoOptions.parse("--profile=postgres").expectedBackend()).isEqualTo("jdbc");
		assertThat(DemoOptions.parse("--profile=redis", "--backend=memory").expectedBackend()).isEqualTo("memory");
	}

	@Test
	void badInputIsNamed() {
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--requests=-1"))
			.withMessage("--requests must be a whole number from 1 to 1000000, was '-1'");
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--profile=mongo"))
			.withMessage("--profile must be one of [redis, redlock, zookeeper, postgres], was 'mongo'");
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--skus=a;drop"))
			.withMessageStartingWith("--skus must be a comma-separated list");
		// what spring-boot:run passes for -Dspring-boot.run.profiles=zookeeper
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--spring.profiles.active=zookeeper"))
			.withMessage("The demo takes its profile as --profile=zookeeper (with Maven: "
					+ "-Dspring-boot.run.arguments=--profile=zookeeper), not as a Spring profile "
					+ "(-Dspring-boot.run.profiles)");
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--speed=3"))
			.withMessage("Unknown option --speed");
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("instances"))
			.withMessage("Unexpected argument 'instances': options look like --name=value");
		assertThatIllegalArgumentException().isThrownBy(() -> DemoOptions.parse("--startup-timeout=0s"))
			.withMessage("--startup-timeout must be a number of seconds such as 180s, was '0s'");
	}

}
