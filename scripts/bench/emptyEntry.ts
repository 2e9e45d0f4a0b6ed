/** Nothing but what the shared esbuild options add to every bundle (the banner): the floor of any import. */
export {};
