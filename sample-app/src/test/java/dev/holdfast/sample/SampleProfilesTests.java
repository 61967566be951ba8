package dev.holdfast.sample;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThatIllegalStateException;

/**
 * A profile the application was asked for and would not apply stops it at startup, before it
 * runs on the default backend as if nothing had been asked.
 */
class SampleProfilesTests {

	@Test
	void unknownProfileFails() {
		assertThatIllegalStateException()
			.isThrownBy(() -> SampleApplication.application().run("--spring.profiles.active=zookeper"))
			.withMessage("The sample defines no profile [zookeper]: use one of [redis, redlock, zookeeper, postgres]");
	}

	@Test
	void theDemosProfileOptionFails() {
		assertThatIllegalStateException().isThrownBy(() -> SampleApplication.application().run("--profile=zookeeper"))
			.withMessageStartingWith("--profile=zookeeper is an option of the demo, not of the application")
			.withMessageContaining("-Dspring-boot.run.profiles=zookeeper");
	}

}
